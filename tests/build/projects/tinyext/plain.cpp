#include <Python.h>

static PyObject* answer(PyObject*, PyObject*) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, "42"}, {nullptr, nullptr, 0, nullptr}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "tinyext_plain", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_tinyext_plain() { return PyModule_Create(&module); }
