// layout.cc: the checks of layout.c, compiled as C++ (CANN's users are mostly C++; the member
// defaults and fixed enum types exist only there).
#include "layout.c"
