#ifndef IDPIPE_CLINUX_SHIM_H
#define IDPIPE_CLINUX_SHIM_H
#if defined(__linux__)
/* glibc declares memfd_create(2) only under _GNU_SOURCE, which Swift's Glibc module is built without; the function
   is in glibc since 2.27. */
int memfd_create(const char *name, unsigned int flags);
#define IDPIPE_MFD_CLOEXEC 1U
#endif
#endif
