#include "runtime/cache_trust.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "support/error.h"

namespace sparsetir {
namespace fs = std::filesystem;

namespace {

std::string OwnerAndModeReason(const struct stat& st) {
  if (st.st_uid != geteuid()) {
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " + std::to_string(geteuid()) + ")";
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("writable by other users (mode ") + mode + ")";
  }
  return "";
}

}  // namespace

std::string EnsurePrivateDirectory(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    std::error_code ec;
    fs::path parent = fs::path(dir).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return std::string("cannot be created (") + std::strerror(errno) + ")";
    }
    if (stat(dir.c_str(), &st) != 0) return std::string("cannot be read (") + std::strerror(errno) + ")";
  }
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (std::string why = OwnerAndModeReason(st); !why.empty()) return why;
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "is not writable";
  return "";
}

std::string UntrustedFileReason(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return std::string("cannot be read (") + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  return OwnerAndModeReason(st);
}

std::string MakePrivateTemporaryDirectory() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "sparsetir-cache-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw UserError(UserErrorKind::kCompile, "cannot create a private kernel cache directory in " + base.string() +
                                                 " (" + std::strerror(errno) + "); set $SPARSETIR_CACHE_DIR");
  }
  return pattern;
}

void WritePrivateFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  unlink(tmp.c_str());  // a leftover of a killed process with our pid
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw UserError(UserErrorKind::kCompile, "cannot write " + tmp + ": " + std::strerror(errno));
  }
  size_t written = 0;
  int error = 0;
  while (written < content.size()) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(tmp.c_str());
    throw UserError(UserErrorKind::kCompile, "cannot write " + path + ": " + std::strerror(error));
  }
}

}  // namespace sparsetir
