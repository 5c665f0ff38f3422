#include <Python.h>
static PyModuleDef def_a = {PyModuleDef_HEAD_INIT, "_a", nullptr, -1, nullptr};
PyMODINIT_FUNC PyInit__a(void) { return PyModule_Create(&def_a); }
