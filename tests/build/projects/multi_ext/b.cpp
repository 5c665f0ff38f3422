#include <Python.h>
static PyModuleDef def_b = {PyModuleDef_HEAD_INIT, "_b", nullptr, -1, nullptr};
PyMODINIT_FUNC PyInit__b(void) { return PyModule_Create(&def_b); }
