// N PUTs released at once, each from a thread of its own over a connection
// of its own (plain blocking sockets, HTTP/1.1, connection: close).
// stdin: "host port path token\n", then N lines (one body each), then an
// empty line. It prints "ready" once every thread waits at the gate, reads
// "go", and prints one JSON array of {start,end,status,text} (epoch ms;
// a failure has status 0, end 0 and text the call that failed with its
// strerror: "connect: ...", "write: ...", "read: Connection reset by peer").
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct job { const char *body; double start, end; int status; char err[128]; };
static char host[256], path[1024], token[512];
static int port;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int open_gate = 0, waiting = 0;

static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }

static void *submit(void *arg) {
  struct job *j = arg;
  pthread_mutex_lock(&mu);
  waiting++;
  pthread_cond_broadcast(&cv);
  while (!open_gate) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  j->start = now_ms();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
  inet_pton(AF_INET, host, &a.sin_addr);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { snprintf(j->err, sizeof j->err, "connect: %s", strerror(errno)); j->status = 0; if (fd >= 0) close(fd); return NULL; }
  int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  size_t blen = strlen(j->body);
  size_t cap = blen + 2048; char *req = malloc(cap);
  int n = snprintf(req, cap, "PUT %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", path, host, port, token, blen, j->body);
  for (int off = 0; off < n;) { ssize_t w = write(fd, req + off, n - off); if (w <= 0) { snprintf(j->err, sizeof j->err, "write: %s", w < 0 ? strerror(errno) : "closed"); close(fd); free(req); return NULL; } off += w; }
  free(req);
  char buf[4096]; size_t got = 0; ssize_t r;
  char head[64] = {0};
  while ((r = read(fd, buf, sizeof buf)) > 0) { if (got < sizeof head - 1) { size_t c = sizeof head - 1 - got; memcpy(head + got, buf, (size_t)r < c ? (size_t)r : c); } got += r; }
  int read_errno = r < 0 ? errno : 0;
  j->end = now_ms();
  close(fd);
  if (sscanf(head, "HTTP/1.%*d %d", &j->status) != 1) {
    j->status = 0;
    j->end = 0;
    if (read_errno) snprintf(j->err, sizeof j->err, "read: %s", strerror(read_errno));
    else snprintf(j->err, sizeof j->err, "no HTTP status in the answer (%zu bytes, connection closed)", got);
  }
  return NULL;
}

int main(void) {
  if (scanf("%255s %d %1023s %511s", host, &port, path, token) != 4) return 2;
  getchar();
  size_t cap = 64, count = 0; struct job *jobs = calloc(cap, sizeof *jobs);
  char *line = NULL; size_t lcap = 0; ssize_t len;
  while ((len = getline(&line, &lcap, stdin)) > 1) {
    line[len - 1] = 0;
    if (count == cap) { cap *= 2; jobs = realloc(jobs, cap * sizeof *jobs); memset(jobs + count, 0, (cap - count) * sizeof *jobs); }
    jobs[count++].body = strdup(line);
  }
  pthread_t *th = calloc(count, sizeof *th);
  pthread_attr_t attr; pthread_attr_init(&attr); pthread_attr_setstacksize(&attr, 256 * 1024);
  for (size_t i = 0; i < count; i++) pthread_create(&th[i], &attr, submit, &jobs[i]);
  pthread_mutex_lock(&mu);
  while ((size_t)waiting < count) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  printf("ready\n"); fflush(stdout);
  if (getline(&line, &lcap, stdin) <= 0) return 3;
  pthread_mutex_lock(&mu); open_gate = 1; pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu);
  for (size_t i = 0; i < count; i++) pthread_join(th[i], NULL);
  printf("[");
  for (size_t i = 0; i < count; i++) printf("%s{\"start\":%.3f,\"end\":%.3f,\"status\":%d,\"text\":\"%s\"}", i ? "," : "", jobs[i].start, jobs[i].end, jobs[i].status, jobs[i].err);
  printf("]\n"); fflush(stdout);
  return 0;
}
