/* json_free: the destructors of every struct the library hands out.
 *
 * Each answer struct owns its strings, its items and the verbatim body in
 * ->json; a list's items are one calloc'd block reached through a pointer
 * array whose first pointer is the block (json.c, hpw_jptr_array), which is
 * how a list frees them.  Destructors accept NULL.  The *_clear functions
 * release what an item owns without freeing the item, for the decoders'
 * failure paths (json_answers.c) and for lists.  No cJSON here: freeing
 * needs only the structs of hpwarm.h. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void hpw_problem_free(struct hpw_problem *p)
{
        if (!p)
                return;
        free(p->type);
        free(p->slug);
        free(p->title);
        free(p->detail);
        free(p);
}

void hpw_health_clear(struct hpw_health *x)
{
        free(x->status);
        free(x->version);
        free(x->json);
}

void hpw_health_free(struct hpw_health *x)
{
        if (!x)
                return;
        hpw_health_clear(x);
        free(x);
}

void hpw_node_clear(struct hpw_node *n)
{
        free(n->cpus);
        if (n->hugepages)
                free(n->hugepages[0]);
        free(n->hugepages);
        free(n->json);
        memset(n, 0, sizeof(*n));
}

void hpw_node_free(struct hpw_node *x)
{
        if (!x)
                return;
        hpw_node_clear(x);
        free(x);
}

void hpw_node_list_free(struct hpw_node_list *x)
{
        if (!x)
                return;
        for (size_t i = 0; i < x->n; i++)
                hpw_node_clear(x->nodes[i]);
        if (x->nodes)
                free(x->nodes[0]);
        free(x->nodes);
        free(x->json);
        free(x);
}

void hpw_reserve_result_free(struct hpw_reserve_result *x)
{
        if (!x)
                return;
        free(x->json);
        free(x);
}

void hpw_elastic_free(struct hpw_elastic *x)
{
        if (!x)
                return;
        free(x->json);
        free(x);
}

void hpw_pool_clear(struct hpw_pool *p)
{
        free(p->name);
        free(p->state_name);
        hpw_problem_free(p->error);
        free(p->path);
        free(p->handoff_qemu);
        free(p->handoff_cloud_hypervisor);
        if (p->handoffs)
                for (size_t i = 0; i < p->handoffs->n; i++)
                        free(p->handoffs->text[i]);
        free(p->handoffs);
        free(p->from_stock);
        free(p->label);
        free(p->json);
        memset(p, 0, sizeof(*p));
}

const char *hpw_pool_handoff(const struct hpw_pool *p, const char *vmm)
{
        const struct hpw_vmm *row = hpw_vmm_find(vmm, false);
        size_t i;

        if (!p || !row)
                return NULL;
        i = (size_t)(row - hpw_vmms);
        return p->handoffs && i < p->handoffs->n ? p->handoffs->text[i] : "";
}

void hpw_pool_free(struct hpw_pool *x)
{
        if (!x)
                return;
        hpw_pool_clear(x);
        free(x);
}

void hpw_pool_list_free(struct hpw_pool_list *x)
{
        if (!x)
                return;
        for (size_t i = 0; i < x->n; i++)
                hpw_pool_clear(x->pools[i]);
        if (x->pools)
                free(x->pools[0]);
        free(x->pools);
        free(x->json);
        free(x);
}

void hpw_stock_free(struct hpw_stock *x)
{
        if (!x)
                return;
        if (x->targets)
                free(x->targets[0]);
        free(x->targets);
        free(x->json);
        free(x);
}

void hpw_handoff_clear(struct hpw_handoff *x)
{
        free(x->vmm);
        free(x->args);
        if (x->argv)
                for (size_t i = 0; i < x->n_argv; i++)
                        free(x->argv[i]);
        free(x->argv);
        free(x->xml);
        free(x->xml_namespace);
        free(x->note);
        free(x->json);
        memset(x, 0, sizeof(*x));
}

void hpw_handoff_free(struct hpw_handoff *x)
{
        if (!x)
                return;
        hpw_handoff_clear(x);
        free(x);
}
