#include <torch/extension.h>

torch::Tensor scatter_sum(torch::Tensor x) { return x.sum(); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scatter_sum", &scatter_sum); }
