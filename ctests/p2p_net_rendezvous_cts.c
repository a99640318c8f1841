/* oxmpi-test: np=2,3,4 timeout=180 env=OXMPI_NET_RNDV_READ=0 */
/* p2p_net_rendezvous.c without RDMA reads: rendezvous messages to another node move as
 * tagged messages the receiver asked for (clear to send), and none is read by RDMA. */
#include "p2p_net_rendezvous.c"
