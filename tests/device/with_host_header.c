/* with_host_header.c: a file that includes both the kernel-side header and CANN's host header
 * must stop at the first with a message that says to split them (device.misuse.host_header),
 * not with a page of redeclaration errors. Compiled by that test (and, for the AscendC
 * architecture, by ascendc.compile) only, never built. */
#include <aclshmem.h>
#include <shmem/device.h>

int main(void) { return 0; }
