#ifndef IDPIPE_CLINUX_SHIM_H
#define IDPIPE_CLINUX_SHIM_H
#if defined(__linux__)
/* glibc declares memfd_create(2) only under _GNU_SOURCE, which Swift's Glibc module is built without; the function
   is in glibc since 2.27. */
int memfd_create(const char *name, unsigned int flags);
#define IDPIPE_MFD_CLOEXEC 1U
/* The same for copy_file_range(2) (glibc 2.27): a report that cannot be named where the plan wrote it is copied in
   the kernel. */
#include <sys/types.h>
ssize_t copy_file_range(int fd_in, __off64_t *off_in, int fd_out, __off64_t *off_out, size_t len, unsigned int flags);
/* O_TMPFILE (Linux 3.11) is defined only under _GNU_SOURCE too: the plan writes plan.json and the ledger into files
   with no name, named once whole. */
#include <fcntl.h>
static inline int idpipe_o_tmpfile(void) { return __O_TMPFILE; }
#endif
#endif
