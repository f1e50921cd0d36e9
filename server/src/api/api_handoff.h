/* api_handoff: the "handoff" member of a pool object (see api_handoff.c;
 * the route handler itself is declared in api.h with the others). */
#pragma once

struct json;
struct pool_view;

/* Add "handoff" for this one pool to the pool object POOL: for each VMM
 * format in the table (handoff.h), in its order, its key with the text
 * (shell words, or an XML format's fragment) and, for a shell format,
 * KEY_argv with the words.  A pool without a file gets "" and []. */
void api_add_pool_handoff(struct json *pool, const struct pool_view *v);
