// Names that reach generated code: the reserved set holds every macro the
// system compiler defines for the prelude's headers, and comments cannot be
// broken out of.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "codegen/identifiers.h"
#include "codegen/prelude_cpu.h"
#include "runtime/cpu_compiler.h"
#include "support/process.h"

namespace sparsetir {
namespace {

TEST(Identifiers, UserNamesStayAsWritten) {
  for (const char* name : {"A", "B", "C", "i", "j", "k", "csrmm", "JO_indptr", "A_4", "IO_4", "feat_size", "nnz",
                           "indptr", "m", "n", "vi", "rows", "tasks", "t", "body", "v_x"}) {
    EXPECT_FALSE(IsReservedIdentifier(name)) << name;
  }
}

TEST(Identifiers, KeywordsMacrosAndGeneratedNamesAreReserved) {
  for (const char* name : {"int", "xor", "and_eq", "try", "typename", "restrict", "int64_t", "size_t", "NAN",
                           "NULL", "INFINITY", "INT32_MAX", "M_PI", "HUGE_VALF", "errno", "alloca", "free",
                           "calloc", "sparsetir_task0", "SparsetirArg", "SPARSETIR_X", "_x", "__attribute__",
                           "launcher", "args", "1x", "a-b", "", "caf\xc3\xa9"}) {
    EXPECT_TRUE(IsReservedIdentifier(name)) << name;
  }
}

TEST(Identifiers, ScriptNamesArePlainAsciiIdentifiers) {
  EXPECT_TRUE(IsScriptName("csrmm"));
  EXPECT_TRUE(IsScriptName("csrmm_init_4"));
  EXPECT_TRUE(IsScriptName(std::string(kMaxScriptNameLength, 'a')));
  for (const std::string& name : {std::string("csrmm\nsystem(\"id\");\n//"), std::string("csrmm\\"),
                                  std::string("a b"), std::string("4x"), std::string(""),
                                  std::string(kMaxScriptNameLength + 1, 'a'), std::string("caf\xc3\xa9")}) {
    EXPECT_FALSE(IsScriptName(name)) << name;
  }
}

TEST(Identifiers, CommentTextCannotEndOrContinueAComment) {
  EXPECT_EQ(CommentText("block csrmm"), "block csrmm");
  EXPECT_EQ(CommentText("x\nsystem(1);\n//"), "x_system(1);_//");
  EXPECT_EQ(CommentText("x\\"), "x_");
  EXPECT_EQ(CommentText("x\?\?/"), "x__/");
  EXPECT_EQ(CommentText("caf\xc3\xa9\r"), "caf___");
}

// Every macro the system compiler defines after the prelude's includes (other
// than the implementation's own, which start with '_') must be reserved, or a
// script name spelled like it would be expanded inside generated code.
TEST(Identifiers, EveryPreludeMacroIsReserved) {
  const std::string path = "/tmp/sparsetir_prelude_macros_" + std::to_string(getpid()) + ".cc";
  {
    std::ofstream out(path);
    out << kCpuPrelude;
  }
  ProcessResult result = RunProcess({CpuCompiler::Get().path(), "-std=c++17", "-dM", "-E", "-x", "c++", path});
  std::remove(path.c_str());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::istringstream lines(result.output);
  std::string line;
  const std::regex define(R"(#define ([A-Za-z][A-Za-z0-9_]*))");
  int checked = 0;
  while (std::getline(lines, line)) {
    std::smatch match;
    if (!std::regex_search(line, match, define)) continue;
    EXPECT_TRUE(IsReservedIdentifier(match[1])) << "macro " << match[1] << " is not reserved";
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace sparsetir
