#ifndef IDPIPE_CLIBCSV_SHIM_H
#define IDPIPE_CLIBCSV_SHIM_H
#include <stddef.h>
#include <csv.h>
#endif
