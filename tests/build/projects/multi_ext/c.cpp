#include <Python.h>
static PyModuleDef def_c = {PyModuleDef_HEAD_INIT, "_c", nullptr, -1, nullptr};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&def_c); }
