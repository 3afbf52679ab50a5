// PyTorch's C++ API (Debian's libtorch-dev) side of bench/train.sh: the same three training steps
// as bench/train.c and bench/train_torch.py, without the Python layer. zero_grad + forward + loss +
// backward + SGD step (lr 0.01), median of 200 steps after 20 warm-up.
// Usage: train_torch THREADS [mlp|cnn|transformer ...]
// Output: "cxx_train_<model>_<T>t <median ms> ms/step". Set OMP_NUM_THREADS/OPENBLAS_NUM_THREADS
// to THREADS in the environment (bench/train.sh does).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

bool cpu_clock = false;  // BENCH_CLOCK=cpu: process CPU time, as bench/train.c

double now_ms() {
    if (cpu_clock) {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void train_one(const std::string &tag, torch::nn::Module &model, const std::function<torch::Tensor()> &loss_fn) {
    const int steps = 200, warmup = 20;
    torch::optim::SGD opt(model.parameters(), torch::optim::SGDOptions(0.01));
    auto step = [&] {
        for (auto &p : model.parameters()) p.mutable_grad() = torch::Tensor();  // set_to_none
        auto loss = loss_fn();
        loss.backward();
        opt.step();
    };
    for (int i = 0; i < warmup; i++) step();
    std::vector<double> v;
    for (int i = 0; i < steps; i++) {
        double t0 = now_ms();
        step();
        v.push_back(now_ms() - t0);
    }
    std::sort(v.begin(), v.end());
    std::printf("%s %.3f ms/step\n", tag.c_str(), 0.5 * (v[steps / 2 - 1] + v[steps / 2]));
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s THREADS [mlp|cnn|transformer ...]\n", argv[0]);
        return 2;
    }
    const char *clk = std::getenv("BENCH_CLOCK");
    cpu_clock = clk != nullptr && clk[0] == 'c';
    int threads = std::atoi(argv[1]);
    at::set_num_threads(threads);
    std::vector<std::string> models(argv + 2, argv + argc);
    if (models.empty()) models = {"mlp", "cnn", "transformer"};
    std::string t = "_" + std::to_string(threads) + "t";
    for (const auto &name : models) {
        torch::manual_seed(0);
        if (name == "mlp") {
            torch::nn::Sequential m(torch::nn::Linear(784, 256), torch::nn::ReLU(), torch::nn::Linear(256, 128),
                                    torch::nn::ReLU(), torch::nn::Linear(128, 10));
            auto x = torch::randn({64, 784});
            auto y = torch::randint(0, 10, {64}, torch::kLong);
            train_one("cxx_train_mlp" + t, *m, [&] { return torch::nn::functional::cross_entropy(m->forward(x), y); });
        } else if (name == "cnn") {
            torch::nn::Sequential m(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3)), torch::nn::ReLU(),
                                    torch::nn::MaxPool2d(2), torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3)),
                                    torch::nn::ReLU(), torch::nn::MaxPool2d(2), torch::nn::Flatten(),
                                    torch::nn::Linear(400, 10));
            auto x = torch::randn({64, 1, 28, 28});
            auto y = torch::randint(0, 10, {64}, torch::kLong);
            train_one("cxx_train_cnn" + t, *m, [&] { return torch::nn::functional::cross_entropy(m->forward(x), y); });
        } else if (name == "transformer") {
            // the 1.13 C++ API has no batch_first: (seq, batch, d_model)
            torch::nn::TransformerEncoderLayer m(
                torch::nn::TransformerEncoderLayerOptions(128, 4).dim_feedforward(512).dropout(0.0));
            auto x = torch::randn({64, 8, 128});
            auto y = torch::randn({64, 8, 128});
            train_one("cxx_train_transformer" + t, *m, [&] { return torch::mse_loss(m->forward(x), y); });
        } else {
            std::fprintf(stderr, "train_torch: unknown model '%s'\n", name.c_str());
            return 2;
        }
    }
    return 0;
}
