#include "ir_dump.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/printer.h"

namespace sparsetir {

namespace {
struct Numbering {
  int next = 0;
};
thread_local Numbering* open_numbering = nullptr;
}  // namespace

std::string IrDumpDirectory() {
  const char* dir = std::getenv("SPARSETIR_DUMP_IR");
  return dir ? dir : "";
}

IrDumpScope::IrDumpScope() {
  if (open_numbering) return;
  open_numbering = new Numbering();
  owner_ = true;
}

IrDumpScope::~IrDumpScope() {
  if (!owner_) return;
  delete open_numbering;
  open_numbering = nullptr;
}

void DumpStep(const PrimFunc& f, const std::string& step) {
  if (!open_numbering) return;
  const int number = open_numbering->next++;
  const std::string dir = IrDumpDirectory();
  if (dir.empty()) return;
  std::filesystem::create_directories(dir);
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%02d_", number);
  std::ofstream(std::filesystem::path(dir) / (f->name + "." + prefix + step + ".py")) << Print(f);
}

void DumpFirstStep(const PrimFunc& f, const std::string& step) {
  if (open_numbering && open_numbering->next == 0) DumpStep(f, step);
}

}  // namespace sparsetir
