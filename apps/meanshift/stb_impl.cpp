// Fallback only (used when the system has stb's headers but no prebuilt libstb, which Debian's
// libstb-dev provides): the single-file libraries' implementations, compiled exactly once.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_resize.h>
#include <stb_image_write.h>
