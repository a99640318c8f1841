/* oxmpi-test: np=2,3,4,8 timeout=240 env=OXMPI_COLL_SHM_COPY_MIN=4096 env=OXMPI_COLL_SHM_BCAST_COPY_MIN=4096 env=OXMPI_COLL_SHM_REDUCE_COPY_MIN=16384 env=OXMPI_COLL_SHM_REDUCE_ROOT_RANKS=3 env=OXMPI_COLL_SHM_EXCHANGE_COPY_MIN=4096 */
/* coll_shm_copy.h with the single-copy thresholds lowered to 4 KiB (reduce: 16 KiB) and the
 * reduce combined by the root alone up to 3 ranks, exchanges by single copy from 4 KiB: small
 * sizes on both sides of them. */
#define UNIT 4096
#include "coll_shm_copy.h"
