#include <torch/extension.h>

torch::Tensor segment_sum(torch::Tensor x) { return x.sum(); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("segment_sum", &segment_sum); }
