// Runs a program without a shell (no quoting pitfalls) and captures its output.
#pragma once

#include <string>
#include <vector>

namespace sparsetir {

struct ProcessResult {
  int exit_code = -1;     // -1 when the program could not be started
  std::string output;     // stdout and stderr, interleaved
};

ProcessResult RunProcess(const std::vector<std::string>& argv);

// The first match of `name` in $PATH (or `name` itself if it holds a '/'); "" if none.
std::string FindProgram(const std::string& name);

}  // namespace sparsetir
