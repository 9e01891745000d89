/*
 * crelay is the least any relay process can cost, written without a
 * language runtime: e2e/minrelay's job (copy newline-delimited messages
 * both ways, dropping a name prefix from requests, nothing parsed, decided,
 * audited or guarded) done by two threads in blocking read(2) and write(2).
 * A relayed message costs one read and one write, against the netpoller's
 * read, EAGAIN read and epoll_pwait calls, and no scheduler runs between
 * them.
 *
 * e2e/bench -floor-relay c builds it with the system's C compiler and
 * measures it as the floor, so that a target no relay process meets on a
 * machine is told apart from one the gate misses:
 *
 *	go run ./e2e/bench -with-floor -floor-relay c
 *
 * Usage, as minrelay's: crelay -strip PREFIX -- COMMAND [ARGS].
 *
 * Its stdin and stdout are reopened through /proc/self/fd, so that the
 * blocking mode it wants is its own description's and never changed under
 * the process at the other end; where that fails it uses them as they are.
 * Its pipes are grown to 1 MB (F_SETPIPE_SZ) at the start, as minrelay and
 * the gate grow theirs when the first large line crosses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *strip;
static size_t striplen;

struct pump {
	int in, out;
	int strip; /* drop strip after each quote, in requests */
};

static void die(const char *what) {
	fprintf(stderr, "crelay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void writeall(int fd, const char *p, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}

/* copylines copies whole lines from p->in to p->out until p->in ends. */
static void *copylines(void *arg) {
	struct pump *p = arg;
	size_t cap = 1 << 21, len = 0;
	char *buf = malloc(cap), *out = malloc(cap);
	if (!buf || !out)
		die("malloc");
	for (;;) {
		if (len == cap) {
			cap *= 2;
			if (!(buf = realloc(buf, cap)) || !(out = realloc(out, cap)))
				die("realloc");
		}
		ssize_t r = read(p->in, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		char *last = memrchr(buf, '\n', len);
		if (!last)
			continue;
		size_t n = (size_t)(last - buf) + 1;
		if (p->strip) {
			/* Per line, as minrelay: the first quote followed by the
			 * prefix loses the prefix. */
			size_t o = 0, i = 0;
			while (i < n) {
				char *eol = memchr(buf + i, '\n', n - i);
				size_t end = (size_t)(eol - buf) + 1, at = end;
				for (size_t j = i; j + 1 + striplen <= end; j++) {
					if (buf[j] == '"' && memcmp(buf + j + 1, strip, striplen) == 0) {
						at = j + 1;
						break;
					}
				}
				memcpy(out + o, buf + i, at - i);
				o += at - i;
				if (at < end) {
					memcpy(out + o, buf + at + striplen, end - at - striplen);
					o += end - at - striplen;
				}
				i = end;
			}
			writeall(p->out, out, o);
		} else {
			writeall(p->out, buf, n);
		}
		memmove(buf, buf + n, len - n);
		len -= n;
	}
	close(p->out);
	return NULL;
}

/* reopen gives a description of fd of its own, in blocking mode. */
static int reopen(int fd, int flags) {
	char path[32];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int r = open(path, flags | O_CLOEXEC);
	return r < 0 ? fd : r;
}

int main(int argc, char **argv) {
	if (argc < 5 || strcmp(argv[1], "-strip") != 0 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "crelay: usage: crelay -strip PREFIX -- COMMAND [ARGS]\n");
		return 2;
	}
	strip = argv[2];
	striplen = strlen(strip);
	int up[2], down[2];
	if (pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0)
		die("pipe");
	for (int i = 0; i < 2; i++) {
		(void)fcntl(up[i], F_SETPIPE_SZ, 1 << 20);
		(void)fcntl(down[i], F_SETPIPE_SZ, 1 << 20);
	}
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(up[0], 0);
		dup2(down[1], 1);
		execvp(argv[4], argv + 4);
		fprintf(stderr, "crelay: %s: %s\n", argv[4], strerror(errno));
		_exit(127);
	}
	close(up[0]);
	close(down[1]);
	struct pump requests = {reopen(0, O_RDONLY), up[1], 1};
	struct pump answers = {down[0], reopen(1, O_WRONLY), 0};
	pthread_t t;
	if (pthread_create(&t, NULL, copylines, &answers) != 0)
		die("pthread_create");
	copylines(&requests);
	pthread_join(t, NULL);
	waitpid(pid, NULL, 0);
	return 0;
}
