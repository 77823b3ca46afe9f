// mf_layout.cc: the checks of mf_layout.c, compiled as C++ (memfabric's users are mostly C++).
#include "mf_layout.c"
