# Installable, relocatable CMake package (filled in below).
