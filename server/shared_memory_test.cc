#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

// A POSIX shared memory object of `size` bytes holding 0, 1, 2, ... (mod 256),
// created for the test and removed after it.
class ShmObject {
 public:
  explicit ShmObject(size_t size)
      : key_("/coalesce_shm_test_" + std::to_string(getpid())) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i % 256);
    EXPECT_EQ(write(fd, bytes.data(), size), static_cast<ssize_t>(size));
    close(fd);
  }
  ~ShmObject() { shm_unlink(key_.c_str()); }
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

TEST(SharedMemoryManagerTest, UnalignedOffsetsAndBounds) {
  ShmObject object(10000);
  SharedMemoryManager manager;
  ASSERT_TRUE(manager.Register("r", object.key(), 5000, 4000).ok());
  auto span = manager.Span("r", 3, 10);
  ASSERT_TRUE(span.ok()) << span.status();
  EXPECT_EQ(static_cast<unsigned char>(span->data[0]), (5000 + 3) % 256);
  EXPECT_EQ(span->size, 10u);
  EXPECT_TRUE(manager.Span("r", 0, 4000).ok());
  EXPECT_EQ(manager.Span("r", 1, 4000).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager.Span("r", UINT64_MAX, 2).status().code(),
            absl::StatusCode::kInvalidArgument);  // no overflow
  EXPECT_EQ(manager.Span("other", 0, 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SharedMemoryManagerTest, RegistrationErrors) {
  ShmObject object(4096);
  SharedMemoryManager manager;
  EXPECT_EQ(manager.Register("r", object.key(), 4000, 100).code(),
            absl::StatusCode::kInvalidArgument);  // past the object's end
  EXPECT_EQ(manager.Register("r", object.key(), 0, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager.Register("r", "/coalesce_missing_key", 0, 1).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(manager.Register("r", object.key(), 0, 4096).ok());
  EXPECT_EQ(manager.Register("r", object.key(), 0, 16).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(SharedMemoryManagerTest, ASpanOutlivesItsRegistration) {
  ShmObject object(4096);
  SharedMemoryManager manager;
  ASSERT_TRUE(manager.Register("r", object.key(), 0, 4096).ok());
  auto span = manager.Span("r", 100, 8);
  ASSERT_TRUE(span.ok());
  manager.Unregister("");  // every region
  EXPECT_EQ(manager.Status("r").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(manager.Status("")->empty());
  EXPECT_EQ(static_cast<unsigned char>(span->data[7]), 107);  // still mapped
}

}  // namespace
}  // namespace coalesce
