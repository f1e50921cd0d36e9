/* http_listen: the listening sockets.  Parses "HOST:PORT", binds TCP and
 * unix stream sockets (the unix one 0660, group set before listen() so no
 * one of the old group can connect in between), and answers whether a
 * listener is loopback only, which main.c uses to refuse exposing an
 * unauthenticated API.  Plain sockets: libmicrohttpd is started on these
 * descriptors by http.c. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "http.h"
#include "http_internal.h"
#include "util.h"

/* Backlog of each listening socket (the kernel caps it at somaxconn). */
#define LISTEN_BACKLOG 128

/* "HOST:PORT", "[V6]:PORT" or ":PORT" -> getaddrinfo() results. */
static int resolve_listen(const char *spec, struct addrinfo **ret)
{
        char host[256];
        const char *colon = strrchr(spec, ':');
        if (!colon || colon == spec || !colon[1])
                return -EINVAL;
        size_t hl = (size_t)(colon - spec);
        if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']') {
                spec++;
                hl -= 2;
        }
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, spec, hl);
        host[hl] = '\0';
        char *end;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (*end || port > 65535)
                return -EINVAL;

        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, ret) != 0)
                return -EADDRNOTAVAIL;
        return 0;
}

static bool sockaddr_is_loopback(const struct sockaddr *sa)
{
        /* Copied out: a struct sockaddr * need not be aligned for the
         * family's own struct. */
        if (sa->sa_family == AF_INET) {
                struct sockaddr_in in;
                memcpy(&in, sa, sizeof(in));
                return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
        }
        if (sa->sa_family == AF_INET6) {
                struct sockaddr_in6 in6;
                memcpy(&in6, sa, sizeof(in6));
                if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
                        return in6.sin6_addr.s6_addr[12] == 127;
                return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr);
        }
        return sa->sa_family == AF_UNIX;
}

int http_listen_is_loopback(const char *spec)
{
        struct addrinfo *ai = NULL;
        int r = resolve_listen(spec, &ai);
        if (r < 0)
                return r;
        r = 1;
        for (struct addrinfo *a = ai; a; a = a->ai_next)
                if (!sockaddr_is_loopback(a->ai_addr))
                        r = 0;
        freeaddrinfo(ai);
        return r;
}

int http_socket_is_loopback(int fd)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                return -errno;
        return sockaddr_is_loopback((struct sockaddr *)&ss);
}

int http_socket_family(int fd)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                return -errno;
        return ss.ss_family;
}

uint16_t http_socket_port(int fd)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                return 0;
        return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
}

int http_listen_tcp(const char *spec, int *ret_fd, uint16_t *ret_port)
{
        struct addrinfo *ai = NULL;
        int r = resolve_listen(spec, &ai);
        if (r < 0)
                return r;
        r = -EADDRNOTAVAIL;
        for (struct addrinfo *a = ai; a && r < 0; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        r = -errno;
                        continue;
                }
                int one = 1;
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
                if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
                        r = -errno;
                        close(fd);
                        continue;
                }
                *ret_port = http_socket_port(fd);
                *ret_fd = fd;
                r = 0;
        }
        freeaddrinfo(ai);
        return r;
}

int http_listen_unix(const char *path, gid_t gid, int *ret_fd)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        /* Replace a stale socket from an earlier run, never any other file. */
        struct stat st;
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return -EEXIST;
                unlink(path);
        }
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        mode_t old = umask(0117); /* socket 0660 */
        int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return -errno;
        /* Group before listen(): nobody of the old group can connect in between. */
        if (gid != (gid_t)-1 && gid != 0 && chown(path, (uid_t)-1, gid) < 0) {
                r = -errno;
                unlink(path);
                return r;
        }
        if (listen(fd, LISTEN_BACKLOG) < 0) {
                r = -errno;
                unlink(path);
                return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int http_socket_is_tcp(int fd)
{
        int fam = http_socket_family(fd);
        if (fam < 0)
                return fam;
        return fam == AF_INET || fam == AF_INET6;
}
