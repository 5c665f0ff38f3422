#include <torch/extension.h>

torch::Tensor add_twice(torch::Tensor a, torch::Tensor b) { return a + 2 * b; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_twice", &add_twice, "a + 2 b"); }
