// Mistake `grads-kept` in a LibTorch program: gradients zeroed in place between steps, so they
// stay allocated through every forward pass.
//
//     optimizer.zero_grad();                 // the mistake (LibTorch 1.x zeroes them in place)
//     net->zero_grad(/*set_to_none=*/true);  // the fix (--fixed): freed between steps
//
// The model: Linear(1024, 1024), ReLU, Linear(1024, 1024), ReLU, Linear(1024, 10), float32.
// Analytic cost: its gradients, 4 * (1024*1024 + 1024 + 1024*1024 + 1024 + 1024*10 + 10) =
// 8,437,800 bytes, held through forward from the second step on. memlens::capture::watchModel
// records them; `memlens-cli check` names the rule.
//
//     memlens-cli record -o run.memlens -- memlens-mistake-grads-kept [--fixed] [--steps N] [--device cuda]
#include "memlens/capture/Session.h"
#include "memlens/capture/WatchModel.h"

#include <torch/torch.h>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
    bool fixed = false;
    int steps = 12;
    std::string device = "cpu";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--fixed") fixed = true;
        else if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
        else if (a == "--device" && i + 1 < argc) device = argv[++i];
        else {
            std::cerr << "usage: memlens-mistake-grads-kept [--fixed] [--steps N] [--device cpu|cuda]\n";
            return 2;
        }
    }
    const torch::Device dev(device);
    memlens::capture::Session capture;
    torch::manual_seed(0);
    auto net = std::make_shared<torch::nn::SequentialImpl>(torch::nn::Linear(1024, 1024), torch::nn::ReLU(),
                                                          torch::nn::Linear(1024, 1024), torch::nn::ReLU(),
                                                          torch::nn::Linear(1024, 10));
    net->to(dev);
    memlens::capture::watchModel(net);
    torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.01));
    memlens::capture::watchOptimizer(optimizer);  // its state is tagged in CUDA snapshots
    for (int step = 0; step < steps; ++step) {
        if (fixed) net->zero_grad(/*set_to_none=*/true);
        else optimizer.zero_grad();
        const auto x = torch::randn({32, 1024}, dev);
        const auto y = torch::randint(0, 10, {32}, torch::TensorOptions().dtype(torch::kLong).device(dev));
        const auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        loss.backward();
        optimizer.step();
        capture.step();
    }
    std::cout << "grads_kept" << (fixed ? " (fixed)" : "") << ": " << steps << " steps\n";
    return 0;
}
