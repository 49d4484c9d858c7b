/* The same NFS call, its result checked: must build (the control case). */
#include "intrfs/netclient.h"

int ping(nc_client_t *c);

int ping(nc_client_t *c)
{
	return nc_null(c);
}
