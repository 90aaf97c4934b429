// An exclusive OS file lock (flock) held for the object's lifetime: concurrent
// processes that compile the same kernel serialize on it, and the second finds
// the first one's result in the cache.
#pragma once

#include <string>

namespace sparsetir {

class FileLock {
 public:
  explicit FileLock(const std::string& path);  // blocks until acquired
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace sparsetir
