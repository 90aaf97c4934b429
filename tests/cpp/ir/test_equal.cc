// Structural equality: alpha-equivalence (names do not matter, structure does)
// and hashing consistent with it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ir/equal.h"
#include "ir/printer.h"
#include "parser/parser.h"
#include "test_util.h"

namespace sparsetir {
namespace {

using testing::ReadScript;
using testing::ReplaceAll;

TEST(StructuralEqualTest, SameScriptParsedTwiceIsEqual) {
  std::string text = ReadScript("csrmm.py");
  PrimFunc a = Parse(text), b = Parse(text);
  EXPECT_NE(a, b);  // distinct objects
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralEqualTest, RenamingVariablesIteratorsAndBuffersKeepsEquality) {
  std::string text = ReadScript("csrmm.py");
  std::string renamed = ReplaceAll(ReplaceAll(ReplaceAll(text, "[i, j, k]", "[row, col, f]"), "C[i, k]", "C[row, f]"),
                                   "A[i, j] * B[j, k]", "A[row, col] * B[col, f]");
  renamed = ReplaceAll(renamed, "J_detach", "Jd");
  ASSERT_NE(text, renamed);
  PrimFunc a = Parse(text), b = Parse(renamed);
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralEqualTest, DifferentDtypeIsNotEqual) {
  std::string text = ReadScript("csrmm.py");
  PrimFunc a = Parse(text);
  PrimFunc b = Parse(ReplaceAll(text, "\"float32\"", "\"float64\""));
  EXPECT_FALSE(StructuralEqual(a, b));
  EXPECT_NE(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralEqualTest, DifferentRolesOrBodyAreNotEqual) {
  std::string text = ReadScript("sddmm.py");
  PrimFunc a = Parse(text);
  EXPECT_FALSE(StructuralEqual(a, Parse(ReplaceAll(text, "* X[i, j]", "+ X[i, j]"))));
  EXPECT_FALSE(StructuralEqual(a, Parse(ReplaceAll(text, "\"sddmm\")", "\"other\")"))));
}

TEST(StructuralEqualTest, SwappingTwoParametersIsNotEqual) {
  std::string text = ReadScript("csrmm.py");
  std::string swapped = ReplaceAll(ReplaceAll(text, "    a: T.handle,\n    b: T.handle,", "    b: T.handle,\n    a: T.handle,"),
                                   "XX", "XX");
  ASSERT_NE(text, swapped);
  EXPECT_FALSE(StructuralEqual(Parse(text), Parse(swapped)));
}

TEST(StructuralEqualTest, BarriersArePartOfTheStructure) {
  // T.sp.sync_threads() prints and parses back as itself; a kernel without
  // one of its barriers is another kernel.
  std::ifstream in(std::string(SPARSETIR_SOURCE_DIR) + "/kernels/sparse_attention_tiles.py");
  std::stringstream read;
  read << in.rdbuf();
  const std::string text = read.str();
  const std::string barrier = "                        POS[0] = stop\n                        T.sp.sync_threads()\n";
  ASSERT_NE(text.find(barrier), std::string::npos);
  PrimFunc a = Parse(text);
  const std::string printed = Print(a);
  EXPECT_NE(printed.find("T.sp.sync_threads()"), std::string::npos);
  EXPECT_TRUE(StructuralEqual(a, Parse(printed)));
  EXPECT_EQ(StructuralHash(a), StructuralHash(Parse(printed)));
  PrimFunc fewer = Parse(ReplaceAll(text, barrier, "                        POS[0] = stop\n"));
  EXPECT_FALSE(StructuralEqual(a, fewer));
  EXPECT_NE(StructuralHash(a), StructuralHash(fewer));
}

}  // namespace
}  // namespace sparsetir
