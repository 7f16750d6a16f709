// nvmlProcessSeries: which NVML device's samples stand for a snapshot's device, by hand.
#include "memlens/model/ProcessSeries.h"

#include <gtest/gtest.h>

using namespace memlens::model;

namespace {

DeviceSample nvml(int64_t t, int device, int64_t used) {
    DeviceSample s;
    s.timeUs = t;
    s.device = device;
    s.source = "nvml";
    s.processUsed = used;
    s.deviceUsed = used + 1000;
    return s;
}

DeviceSample torchSample(int64_t t, int device, int64_t reserved) {
    DeviceSample s;
    s.timeUs = t;
    s.device = device;
    s.source = "torch";
    s.reserved = reserved;
    return s;
}

using V = std::vector<TimedBytes>;

} // namespace

TEST(ProcessSeries, SameDeviceInTimeOrderWithoutTorchSamples) {
    std::vector<DeviceSample> s{nvml(20, 0, 7), torchSample(15, 0, 99), nvml(10, 0, 5), nvml(10, 1, 3), nvml(30, 1, 4)};
    EXPECT_EQ(nvmlProcessSeries(s, 0), (V{{10, 5}, {20, 7}}));
    EXPECT_EQ(nvmlProcessSeries(s, 1), (V{{10, 3}, {30, 4}}));
}

TEST(ProcessSeries, CudaVisibleDevicesRemapsTheOnlyUsedDevice) {
    // CUDA_VISIBLE_DEVICES=3: torch's cuda:0 is NVML's device 3; devices 0-2 show the job at 0 bytes
    std::vector<DeviceSample> s{nvml(10, 0, 0), nvml(10, 3, 500), nvml(20, 0, 0), nvml(20, 3, 600), nvml(20, 2, 0)};
    EXPECT_EQ(nvmlProcessSeries(s, 0), (V{{10, 500}, {20, 600}}));
}

TEST(ProcessSeries, SeveralUsedDevicesKeepTheirIndices) {
    std::vector<DeviceSample> s{nvml(10, 0, 100), nvml(10, 1, 200), nvml(10, 2, 0)};
    EXPECT_EQ(nvmlProcessSeries(s, 1), (V{{10, 200}}));
    EXPECT_EQ(nvmlProcessSeries(s, 2), (V{{10, 0}}));  // present, unused
    EXPECT_TRUE(nvmlProcessSeries(s, 5).empty());      // not there at all
}

TEST(ProcessSeries, NoNvmlSamples) {
    std::vector<DeviceSample> s{torchSample(10, 0, 5)};
    DeviceSample unknown = nvml(20, 0, 0);
    unknown.processUsed.reset();  // NVML could not say
    s.push_back(unknown);
    EXPECT_TRUE(nvmlProcessSeries(s, 0).empty());
    EXPECT_TRUE(nvmlProcessSeries({}, 0).empty());
}
