// run.communicator (train/device_communicator.h) on the CPU backend: mpi and auto keep the host
// communicator; nccl is a UsageError naming the key (NCCL needs the CUDA backend).
#include <gtest/gtest.h>

#include "io/error.h"
#include "train/device_communicator.h"

using namespace ds;

TEST(DeviceCommunicator, CpuTrainingKeepsTheHostCommunicatorAndRefusesNccl) {
  auto be = model::make_cpu_backend(1);
  auto host = make_single_process_communicator();
  EXPECT_EQ(make_training_communicator("mpi", *host, *be, false), nullptr);
  EXPECT_EQ(make_training_communicator("auto", *host, *be, false), nullptr);
  try {
    make_training_communicator("nccl", *host, *be, false);
    FAIL() << "nccl on the CPU accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'run.communicator' is nccl"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_training_communicator("gloo", *host, *be, false), UsageError);
}

TEST(DeviceCommunicator, WireTypes) {
  EXPECT_EQ(parse_wire_type("fp32"), Communicator::WireType::kFp32);
  EXPECT_EQ(parse_wire_type("bf16"), Communicator::WireType::kBf16);
  EXPECT_EQ(parse_wire_type("fp16"), Communicator::WireType::kFp16);
  EXPECT_THROW(parse_wire_type("int8"), UsageError);
}
