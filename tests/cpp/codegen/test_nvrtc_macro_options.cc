// NVRTC's -D / -U options as the emulator and the parameter reader read them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/nvrtc_macro_options.h"
#include "support/error.h"

namespace sparsetir {
namespace {

std::string ErrorOf(const std::string& option) {
  try {
    ParseMacroOption(option);
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserErrorKind::kArgument);
    return e.what();
  }
  return "";
}

TEST(NvrtcMacroOptions, ReadsEveryFormOfDefineAndUndefine) {
  const auto plain = ParseMacroOption("-DTILE");
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->define);
  EXPECT_EQ(plain->name, "TILE");
  EXPECT_EQ(plain->value, "1");  // as NVRTC defines a bare name
  const auto valued = ParseMacroOption("--define-macro=acc_t=unsigned int");
  ASSERT_TRUE(valued.has_value());
  EXPECT_EQ(valued->name, "acc_t");
  EXPECT_EQ(valued->value, "unsigned int");
  EXPECT_EQ(ParseMacroOption("-DEMPTY=")->value, "");  // defined as nothing
  EXPECT_EQ(ParseMacroOption("-DX=a=b")->value, "a=b");  // the first '=' splits
  const auto undefine = ParseMacroOption("--undefine-macro=TILE");
  ASSERT_TRUE(undefine.has_value());
  EXPECT_FALSE(undefine->define);
  EXPECT_EQ(undefine->name, "TILE");
  EXPECT_FALSE(ParseMacroOption("-UX")->define);
}

TEST(NvrtcMacroOptions, OtherOptionsAreNoMacroOptions) {
  for (const char* option : {"-I/usr/include", "--use_fast_math", "-lineinfo", "-std=c++17", "-arch=sm_90", ""}) {
    EXPECT_FALSE(ParseMacroOption(option).has_value()) << option;
  }
}

TEST(NvrtcMacroOptions, RefusesAMalformedMacroOptionQuotingIt) {
  EXPECT_EQ(ErrorOf("-D"), "the option '-D' does not name a macro");
  EXPECT_EQ(ErrorOf("-D1X=2"), "the option '-D1X=2' does not name a macro");
  EXPECT_EQ(ErrorOf("-Da-b"), "the option '-Da-b' does not name a macro");
  EXPECT_EQ(ErrorOf("-DX=1\n-DY"), "the option '-DX=1\n-DY' does not name a macro");
  EXPECT_EQ(ErrorOf("--undefine-macro="), "the option '--undefine-macro=' does not name a macro");
  EXPECT_EQ(ErrorOf("-UFOO=1"), "the option '-UFOO=1' gives -U a value");
}

TEST(NvrtcMacroOptions, DefinedMacrosTakesTheOptionsInOrder) {
  const std::vector<MacroOption> defined =
      DefinedMacros({"-DA=1", "-I/x", "-DB", "-DA=2", "-UB", "-DC=3", "-UC", "-DC=4", "-UNEVER"});
  ASSERT_EQ(defined.size(), 2u);
  EXPECT_EQ(defined[0].name, "A");
  EXPECT_EQ(defined[0].value, "2");  // the later definition
  EXPECT_EQ(defined[1].name, "C");
  EXPECT_EQ(defined[1].value, "4");  // defined again after its -U
  EXPECT_TRUE(DefinedMacros({"-DX", "-UX"}).empty());
  EXPECT_TRUE(DefinedMacros({}).empty());
}

}  // namespace
}  // namespace sparsetir
