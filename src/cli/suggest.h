// "Did you mean ...?" for mistyped subcommands and flags.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::cli {

// Edits (insertions, deletions, substitutions, swaps of adjacent characters) that turn
// `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate `given` most likely meant: the one candidate it abbreviates (`--temp` for
// `--temperature`), else the closest within a third of its length in edits (none for
// words under three characters). Ties go to the first candidate.
std::optional<std::string> closest_name(std::string_view given, const std::vector<std::string>& candidates);

}  // namespace glass::cli
