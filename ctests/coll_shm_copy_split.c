/* oxmpi-test: np=2,3,4 timeout=240 env=OXMPI_COLL_SHM_REDUCE_ROOT_RANKS=0 env=OXMPI_COLL_SHM_REDUCE_COPY_MIN=262144 env=OXMPI_COLL_SHM_EXCHANGE_COPY_MIN=65536 */
/* coll_shm_copy.h with every single-copy reduce split among the ranks (also at 2 ranks, where
 * the root combines alone by default), the reduce by single copy from 256 KiB (by default
 * only from 2 MiB on 8 ranks) and the exchanges from 64 KiB (the test's 4 and 1 units). */
#include "coll_shm_copy.h"
