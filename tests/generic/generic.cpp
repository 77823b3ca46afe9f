// generic.cpp: generic.c built as C++, where the generic names are overloads.
#include "generic.c"
