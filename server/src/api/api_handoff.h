/* api_handoff: the "handoff" member of a pool object (see api_handoff.c;
 * the route handler itself is declared in api.h with the others). */
#pragma once

struct json;
struct pool_view;

/* Add "handoff": {qemu, qemu_argv, cloud_hypervisor, cloud_hypervisor_argv,
 * libvirt} for this one pool to the pool object POOL.  A pool without a file
 * gets "" and []. */
void api_add_pool_handoff(struct json *pool, const struct pool_view *v);
