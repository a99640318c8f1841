/* oxmpi-test: np=2,3,4 timeout=180 env=OXMPI_NET_RDMA_RMA=0 */
/* rma_net_rdma.c without RDMA of windows: Put and Get toward members on other nodes go as
 * requests their agents apply, and none is done by RDMA. */
#include "rma_net_rdma.c"
