/* oxmpi-test: np=1,2,3,4,5,8 timeout=180 */
/* Point-to-point collectives around the default selection thresholds (see coll_p2p.h). */
#include "coll_p2p.h"
