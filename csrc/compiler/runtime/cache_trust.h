// What the kernel cache trusts on disk. A cached object is code that runs in
// the calling process, so it is loaded only from a directory that no one else
// can write, and only if the file itself is ours and no one else can write it:
//  - a directory is private when it is owned by the effective user and has no
//    group or other write permission (we create ours 0700);
//  - a file is trusted when it is a regular file (not a symlink), owned by the
//    effective user, with no group or other write permission (we write 0600).
// Anything else is never loaded: the kernel is rebuilt (a private directory
// replaces an untrusted one for the rest of the process, with a warning).
#pragma once

#include <string>

namespace sparsetir {

// Creates `dir` (and missing parents) if needed, the leaf with mode 0700.
// Returns "" if `dir` is then a private directory, else why it is not.
std::string EnsurePrivateDirectory(const std::string& dir);

// "" if `path` is a trusted file, else why not.
std::string UntrustedFileReason(const std::string& path);

// A new private directory under the system's temporary directory
// (mkdtemp, mode 0700); throws a compile UserError if none can be made.
std::string MakePrivateTemporaryDirectory();

// Writes `content` to `path` atomically with mode 0600: a new temporary file
// in the same directory (O_EXCL, no symlink followed), then rename. The
// temporary file is removed on every failure path.
void WritePrivateFile(const std::string& path, const std::string& content);

}  // namespace sparsetir
