// A small LibTorch training program recorded with memlens::capture::Session: the example of the
// C++ capture library, and the C++ job of its tests (tests/capture) and of the GPU check
// (capture/tests/gpu/run.sh).
//
//   memlens-capture-example [--steps N] [--eval N] [--epochs N] [--out FILE] [--exit CODE]
//                           [--leak] [--oom] [--markers] [--scan]
//
// --leak keeps every loss (and its graph) alive, as `losses.append(loss)` does, and names each
// with memlens::capture::watch so that the session's graph scans show them; --oom allocates
// 1 GiB blocks on the GPU until it runs out of memory (at most 4096), catches the error, frees
// them and goes on.
#include "memlens/capture/Session.h"
#include "memlens/capture/Watch.h"

#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    int steps = 12, evalSteps = 5, epochs = 1, exitCode = 0;
    bool oom = false, leak = false, markers = false, scan = false;
    memlens::capture::SessionOptions options;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
        if (a == "--steps") steps = std::stoi(next());
        else if (a == "--eval") evalSteps = std::stoi(next());
        else if (a == "--epochs") epochs = std::stoi(next());
        else if (a == "--out") options.output = next();
        else if (a == "--exit") exitCode = std::stoi(next());
        else if (a == "--leak") leak = true;
        else if (a == "--oom") oom = true;
        else if (a == "--markers") markers = true;
        else if (a == "--scan") scan = true;
        else {
            std::cerr << "unknown argument " << a << "\n";
            return 2;
        }
    }
    options.capture.maxEntries = 20000;
    memlens::capture::Session capture(options);
    std::cout << "memlens capture: " << (capture.toRecorder() ? "recorder " : "file ") << capture.destination()
              << ", allocator snapshots: " << (capture.allocatorSnapshots() ? "yes" : "no (" + capture.snapshotsNote() + ")")
              << std::endl;

    torch::manual_seed(0);
    torch::Device device = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
    torch::nn::Sequential model(torch::nn::Linear(64, 256), torch::nn::ReLU(), torch::nn::Linear(256, 10));
    model->to(device);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05));
    std::vector<torch::Tensor> losses;  // --leak: the classic mistake

    for (int e = 0; e < epochs; ++e) {
        model->train();
        for (int s = 0; s < steps; ++s) {
            auto x = torch::randn({32, 64}, device);
            auto y = torch::randint(0, 10, {32}, torch::TensorOptions().dtype(torch::kLong).device(device));
            opt.zero_grad();
            auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
            loss.backward();
            opt.step();
            if (leak) {
                losses.push_back(loss);  // keeps the graph of every step alive
                memlens::capture::watch(losses.back(), "losses[" + std::to_string(losses.size() - 1) + "]");
            }
            if (markers && s == steps / 2) capture.marker("halfway", {{"epoch", e}, {"loss", loss.item<double>()}});
            capture.step("train");
        }
        model->eval();
        torch::NoGradGuard noGrad;
        for (int s = 0; s < evalSteps; ++s) {
            auto x = torch::randn({32, 64}, device);
            auto out = model->forward(x);
            (void)out;
            capture.step("eval");
        }
    }
    if (scan) capture.graphScan({{"graphs", nlohmann::json::array()}, {"note", "example"}}, true, "train");

    if (oom && device.is_cuda()) {
        std::vector<torch::Tensor> hog;
        try {
            while (hog.size() < 4096)
                hog.push_back(torch::empty({int64_t(1) << 30}, torch::TensorOptions().dtype(torch::kUInt8).device(device)));
            std::cout << "no out-of-memory error after 4 TiB" << std::endl;
        } catch (const std::exception&) {
            std::cout << "out of memory after " << hog.size() << " GiB (expected)" << std::endl;
        }
        hog.clear();
        capture.step("other");
    }
    capture.finish();
    std::cout << "done: " << capture.iteration() - 1 << " iterations" << std::endl;
    return exitCode;
}
