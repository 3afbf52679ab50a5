// The same three overhead measurements as bench/overhead.c, from PyTorch's C++ API (Debian's
// libtorch-dev): at::add on 1-element tensors without and with autograd recording, and a
// 100-op chain forward + backward. Prints "name value unit" lines.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int kRounds = 9;
constexpr int kChainMuls = 50;

double now_ns() {
    return std::chrono::duration<double, std::nano>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

torch::Tensor chain(torch::Tensor x) {
    for (int i = 0; i < kChainMuls; i++)
        x = x * 1.0001 + 0.1;
    return x;
}

}  // namespace

int main() {
    at::set_num_threads(1);
    auto a = torch::rand({1}), b = torch::rand({1});
    auto ga = torch::rand({1}, torch::requires_grad()), gb = torch::rand({1}, torch::requires_grad());
    auto x0 = torch::ones({1}, torch::requires_grad());
    chain(x0).backward();
    if (std::abs(x0.grad().item<double>() - std::pow(1.0001, kChainMuls)) > 1e-4) {
        std::fprintf(stderr, "overhead_torch: chain gradient is wrong\n");
        return 1;
    }
    std::vector<double> s_add, s_grad, s_chain;
    const int n_add = 200000, n_chain = 2000;
    for (int r = -1; r < kRounds; r++) {
        double t0 = now_ns();
        for (int i = 0; i < n_add; i++)
            auto c = at::add(a, b);
        double t1 = now_ns();
        for (int i = 0; i < n_add; i++)
            auto c = torch::add(ga, gb);
        double t2 = now_ns();
        for (int i = 0; i < n_chain; i++) {
            x0.mutable_grad() = torch::Tensor();
            chain(x0).backward();
        }
        double t3 = now_ns();
        if (r >= 0) {
            s_add.push_back((t1 - t0) / n_add);
            s_grad.push_back((t2 - t1) / n_add);
            s_chain.push_back((t3 - t2) / n_chain / (2 * kChainMuls));
        }
    }
    std::printf("torch_add_nograd %.0f ns\n", median(s_add));
    std::printf("torch_add_grad %.0f ns\n", median(s_grad));
    std::printf("torch_chain_fwd_bwd %.0f ns/op\n", median(s_chain));
    return 0;
}
