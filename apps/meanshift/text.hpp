#pragma once
/// @file text.hpp
/// Text that reaches the terminal. Anything derived from the input (file names, CSV fields, NPY
/// header text, messages that quote them) goes through escape_for_terminal() where it is printed,
/// so that control bytes (ESC sequences, carriage returns, bell) cannot act on the terminal.

#include <cstddef>
#include <string>
#include <string_view>

namespace mscli {

/// Printable ASCII and well-formed UTF-8 characters from U+00A0 on stay as they are (except the
/// bidirectional controls U+200E/F, U+202A-U+202E and U+2066-U+2069); every other byte — C0/C1
/// controls, DEL, malformed or overlong UTF-8 — becomes \xNN, and a backslash becomes \\ so the
/// result is unambiguous.
std::string escape_for_terminal(std::string_view text);

/// The first `max_bytes` bytes of `text` followed by "..." when longer (for quoting input fields
/// in messages). The result is raw bytes: it is escaped where the message is printed.
std::string clip(std::string_view text, std::size_t max_bytes = 40);

/// Short scientific form of a number for messages and summaries: "%.3g" ("1.23e+09", "0.5").
std::string sci(double v);

}  // namespace mscli
