// Parser tests:
//  - every script in tests/scripts/ survives Parse -> Print -> Parse -> Print
//    with both prints equal;
//  - every script in tests/must_fail/ is rejected with a UserError whose message
//    holds each of the script's leading "# expect: <substring>" lines (the first
//    line is always one) and a source location (" --> file:line:col");
//  - errors report line:column and show the offending source line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ir/printer.h"
#include "parser/parser.h"
#include "support/error.h"

namespace sparsetir {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = SPARSETIR_SOURCE_DIR;
constexpr const char kExpectPrefix[] = "# expect: ";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The *.py files directly under `folder` (relative to the repository root), sorted.
std::vector<std::string> ScriptsIn(const std::string& folder) {
  std::vector<std::string> names;
  const fs::path dir = kSourceDir / folder;
  if (!fs::is_directory(dir)) return names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".py") {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "bad_indentation.py" -> "bad_indentation": gtest names allow [A-Za-z0-9_] only.
std::string ScriptTestName(const testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// The substrings of the leading "# expect: ..." lines of a must-fail script.
std::vector<std::string> ExpectedSubstrings(const std::string& text) {
  std::vector<std::string> expected;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line) && line.rfind(kExpectPrefix, 0) == 0) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    expected.push_back(line.substr(sizeof(kExpectPrefix) - 1));
  }
  return expected;
}

// Parses `text` and returns the UserError's message; fails the test (and
// returns "") if parsing succeeds or throws anything else.
std::string ParseError(const std::string& text, const std::string& source_name) {
  try {
    Parse(text, source_name);
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserErrorKind::kScript) << e.what();
    return e.what();
  } catch (const InternalError& e) {
    ADD_FAILURE() << "expected a UserError, got an InternalError:\n" << e.what();
    return "";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a UserError, got another exception:\n" << e.what();
    return "";
  }
  ADD_FAILURE() << source_name << " parsed without error";
  return "";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------- round trip

class RoundTripTest : public testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, PrintParsePrintIsStable) {
  const std::string text = ReadFile(kSourceDir / "tests/scripts" / GetParam());
  const std::string first = Print(Parse(text, GetParam()));
  const std::string second = Print(Parse(first, GetParam() + " (printed)"));
  EXPECT_EQ(first, second);
}

INSTANTIATE_TEST_SUITE_P(Scripts, RoundTripTest, testing::ValuesIn(ScriptsIn("tests/scripts")), ScriptTestName);

TEST(RoundTripScripts, FolderIsNotEmpty) { EXPECT_FALSE(ScriptsIn("tests/scripts").empty()); }

// ---------------------------------------------------------------- must fail

class MustFailTest : public testing::TestWithParam<std::string> {};

TEST_P(MustFailTest, RaisesUserErrorNamingTheMistake) {
  const std::string text = ReadFile(kSourceDir / "tests/must_fail" / GetParam());
  const std::vector<std::string> expected = ExpectedSubstrings(text);
  ASSERT_FALSE(expected.empty()) << GetParam() << ": the first line must be '" << kExpectPrefix << "<substring>'";

  const std::string message = ParseError(text, GetParam());
  if (message.empty()) return;  // already reported
  for (const std::string& substring : expected) {
    EXPECT_TRUE(Contains(message, substring)) << "expected the message to contain\n  " << substring
                                              << "\nbut it is\n" << message;
  }
  EXPECT_TRUE(Contains(message, " --> ")) << "the message has no source location:\n" << message;
}

INSTANTIATE_TEST_SUITE_P(Scripts, MustFailTest, testing::ValuesIn(ScriptsIn("tests/must_fail")), ScriptTestName);

TEST(MustFailScripts, CoverAtLeast24Mistakes) { EXPECT_GE(ScriptsIn("tests/must_fail").size(), 24u); }

// ---------------------------------------------------------------- locations

// Lines are numbered in the comments; each script has one mistake.
TEST(ErrorLocation, SyntaxErrorReportsLineAndColumn) {
  const std::string script =
      "@T.prim_func\n"                                     // 1
      "def f(a: T.handle, m: T.int32) -> None:\n"         // 2
      "    T.func_attr({\"sparse_tir_level\": 2})\n"       // 3
      "    I = T.sp.dense_fixed(m)\n"                      // 4
      "    A = T.sp.match_buffer(a, (I,) \"float32\")\n";  // 5: missing ',' before the dtype
  const std::string message = ParseError(script, "syntax.py");
  EXPECT_TRUE(Contains(message, "expected ')'")) << message;
  EXPECT_TRUE(Contains(message, "syntax.py:5:35")) << message;  // the string after "(I,) "
}

TEST(ErrorLocation, LexerErrorReportsLineAndColumn) {
  const std::string script =
      "@T.prim_func\n"                              // 1
      "def f(a: T.handle, m: T.int32) -> None:\n"  // 2
      "    I = T.sp.dense_fixed(m $ 2)\n";          // 3: '$' is not a token
  const std::string message = ParseError(script, "lexer.py");
  EXPECT_TRUE(Contains(message, "unexpected character '$'")) << message;
  EXPECT_TRUE(Contains(message, "lexer.py:3:28")) << message;
}

TEST(ErrorLocation, SemanticErrorReportsLineAndColumn) {
  const std::string script =
      "@T.prim_func\n"                              // 1
      "def f(a: T.handle, m: T.int32) -> None:\n"  // 2
      "    I = T.sp.dense_fixed(mm)\n";             // 3: undefined name
  const std::string message = ParseError(script, "names.py");
  EXPECT_TRUE(Contains(message, "undefined name 'mm'")) << message;
  EXPECT_TRUE(Contains(message, "names.py:3:26")) << message;
}

// A small SpMV-like kernel whose iteration line and body line are given.
std::string KernelWithIteration(const std::string& iteration_line, const std::string& body) {
  return "@T.prim_func\n"
         "def spmv(a: T.handle, x: T.handle, y: T.handle, indptr: T.handle, indices: T.handle,\n"
         "         m: T.int32, n: T.int32, nnz: T.int32) -> None:\n"
         "    T.func_attr({\"sparse_tir_level\": 2})\n"
         "    I = T.sp.dense_fixed(m)\n"
         "    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), \"int32\")\n"
         "    J_detach = T.sp.dense_fixed(n)\n"
         "    A = T.sp.match_buffer(a, (I, J), \"float32\")\n"
         "    X = T.sp.match_buffer(x, (J_detach,), \"float32\")\n"
         "    Y = T.sp.match_buffer(y, (I,), \"float32\")\n" +
         iteration_line + "\n" + body + "\n";
}

TEST(ErrorLocation, KernelTemplateParses) {
  EXPECT_NO_THROW(Parse(KernelWithIteration("    with T.sp.iteration([I, J], \"SR\", \"spmv\") as [i, j]:",
                                            "        with T.init():\n"
                                            "            Y[i] = 0.0\n"
                                            "        Y[i] = Y[i] + A[i, j] * X[j]")));
}

TEST(ErrorLocation, IterationErrorShowsTheIterationLine) {
  // A reduction over J without T.init(): reported at the iteration itself.
  const std::string iteration = "    with T.sp.iteration([I, J], \"SR\", \"spmv\") as [i, j]:";
  const std::string message = ParseError(KernelWithIteration(iteration, "        Y[i] = Y[i] + A[i, j] * X[j]"), "spmv.py");
  EXPECT_TRUE(Contains(message, "iteration 'spmv' reduces over J into buffer 'Y'")) << message;
  EXPECT_TRUE(Contains(message, " 11 | " + iteration)) << message;
  EXPECT_TRUE(Contains(message, "^")) << message;
}

TEST(ErrorLocation, ErrorInIterationBodyShowsTheBodyLine) {
  // A[j, i]: the indices of A are swapped.
  const std::string body = "        Y[i] = A[j, i] * X[j]";
  const std::string message =
      ParseError(KernelWithIteration("    with T.sp.iteration([I, J], \"SS\", \"spmv\") as [i, j]:", body), "spmv.py");
  EXPECT_TRUE(Contains(message, "buffer 'A'")) << message;
  EXPECT_TRUE(Contains(message, "spmv.py:12:16")) << message;
  EXPECT_TRUE(Contains(message, " 12 | " + body)) << message;
}

// ---------------------------------------------------------------- shared structure arrays

// A kernel over I -> J -> K whose J and K are declared by the given lines.
std::string TwoLevelKernel(const std::string& j_line, const std::string& k_line) {
  return "@T.prim_func\n"
         "def f(a: T.handle, p: T.handle, q: T.handle, r: T.handle, s: T.handle,\n"
         "      m: T.int32, n: T.int32, nnz: T.int32, nnz2: T.int32) -> None:\n"
         "    T.func_attr({\"sparse_tir_level\": 2})\n"
         "    I = T.sp.dense_fixed(m)\n" +
         j_line + "\n" + k_line + "\n" +
         "    A = T.sp.match_buffer(a, (I, J, K), \"float32\")\n"
         "    with T.sp.iteration([I, J, K], \"SSS\", \"f\") as [i, j, k]:\n"
         "        A[i, j, k] = 1.0\n";
}

// Lowering makes one buffer per structure handle, shaped by the first
// iterator; a second iterator under another parent once indexed it with the
// wrong rank (an internal error). It is the script's mistake.
TEST(SharedStructure, HandleUnderAnotherParentIsAScriptError) {
  const std::string message =
      ParseError(TwoLevelKernel("    J = T.sp.compressed_varied(I, (n, nnz), (p, q), \"int32\")",
                                "    K = T.sp.compressed_varied(J, (n, nnz2), (p, s), \"int32\")"),
                 "shared.py");
  EXPECT_TRUE(Contains(message, "handle 'p' is the indptr of iterator 'J', whose parent is I; iterator 'K' (parent J)"))
      << message;
  EXPECT_TRUE(Contains(message, "shared.py:7:47")) << message;
}

TEST(SharedStructure, HandleInTwoRolesOrTypesIsAScriptError) {
  const std::string j = "    J = T.sp.compressed_varied(I, (n, nnz), (p, q), \"int32\")";
  EXPECT_TRUE(Contains(ParseError(TwoLevelKernel(j, "    K = T.sp.compressed_varied(J, (n, nnz2), (r, p), \"int32\")"), "x"),
                       "handle 'p' is the indptr of iterator 'J'; it cannot also be the indices of iterator 'K'"));
  EXPECT_TRUE(Contains(ParseError(TwoLevelKernel("    J = T.sp.compressed_varied(I, (n, nnz), (p, p), \"int32\")",
                                                 "    K = T.sp.compressed_varied(J, (n, nnz2), (r, s), \"int32\")"),
                                  "x"),
                       "iterator 'J': its indptr and indices must be different handles"));
  const std::string message =
      ParseError(TwoLevelKernel(j, "    J2 = T.sp.dense_varied(I, (n, nnz), p, \"int64\")\n"
                                   "    K = T.sp.compressed_varied(J, (n, nnz2), (r, s), \"int32\")"),
                 "x");
  EXPECT_TRUE(Contains(message, "handle 'p' is the indptr of iterator 'J', of idtype int32; iterator 'J2' (idtype int64)"))
      << message;
}

TEST(SharedStructure, HandleUnderTheSameParentIsAccepted) {
  EXPECT_NO_THROW(Parse(TwoLevelKernel("    J = T.sp.compressed_varied(I, (n, nnz), (p, q), \"int32\")\n"
                                       "    J2 = T.sp.dense_varied(I, (n, nnz), p, \"int32\")",
                                       "    K = T.sp.compressed_varied(J, (n, nnz2), (r, s), \"int32\")")));
}

}  // namespace
}  // namespace sparsetir
