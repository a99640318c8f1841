/* oxmpi-test: np=2,3,4 timeout=180 env=OXMPI_NET_EAGER_RDMA=0 */
/* p2p_net_eager_rdma.c with the RDMA eager channel off: every packet to another node is a
 * tagged message, and none is taken from a ring. */
#include "p2p_net_eager_rdma.c"
