/* workq: bounded queue of deferred work (see workq.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workq.h"

static void *workq_thread(void *arg)
{
        struct workq *q = arg;
        for (;;) {
                pthread_mutex_lock(&q->lock);
                q->idle++;
                while (!q->head && !q->stopping)
                        pthread_cond_wait(&q->cond, &q->lock);
                q->idle--;
                struct workq_item *it = q->head;
                if (!it) {
                        pthread_mutex_unlock(&q->lock);
                        return NULL;
                }
                q->head = it->next;
                if (!q->head)
                        q->tail = NULL;
                q->pending--;
                pthread_mutex_unlock(&q->lock);
                it->run(it);
        }
}

int workq_start(struct workq *q, const char *name, size_t n_threads, size_t max_pending, bool only_if_idle)
{
        if (n_threads > WORKQ_MAX_THREADS)
                return -EINVAL;
        q->only_if_idle = only_if_idle;
        q->max_pending = max_pending;
        snprintf(q->name, sizeof(q->name), "%s", name);
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        for (size_t i = 0; i < n_threads; i++) {
                int r = pthread_create(&q->threads[i], NULL, workq_thread, q);
                if (r != 0)
                        return -r;
                char tn[16];
                snprintf(tn, sizeof(tn), "%s-%zu", q->name, i);
                pthread_setname_np(q->threads[i], tn);
                q->n_threads++;
        }
        return 0;
}

bool workq_push(struct workq *q, struct workq_item *it)
{
        pthread_mutex_lock(&q->lock);
        if (q->stopping || q->pending >= (q->only_if_idle ? q->idle : q->max_pending)) {
                pthread_mutex_unlock(&q->lock);
                return false;
        }
        it->next = NULL;
        if (q->tail)
                q->tail->next = it;
        else
                q->head = it;
        q->tail = it;
        q->pending++;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
        return true;
}

void workq_stop(struct workq *q)
{
        if (!q->n_threads)
                return;
        pthread_mutex_lock(&q->lock);
        q->stopping = true;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
        for (size_t i = 0; i < q->n_threads; i++)
                pthread_join(q->threads[i], NULL);
        q->n_threads = 0;
}
