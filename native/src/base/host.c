/*
 * railgauge: this host's identity (see host.h).
 */
#include "base/host.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t rg_host_id(void)
{
    char        text[512];
    struct stat st;
    uint64_t    h = 1469598103934665603ull;
    size_t      i, n;
    FILE       *f;

    memset(text, 0, sizeof(text));
    if (gethostname(text, 255) != 0) {
        text[0] = '\0';
    }
    n = strlen(text);
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(text + n, (int)(sizeof(text) - n - 32), f) == NULL) {
            text[n] = '\0';
        }
        fclose(f);
    }
    n = strlen(text);
    if (stat("/proc/self/ns/pid", &st) == 0) {
        snprintf(text + n, sizeof(text) - n, "/%llu", (unsigned long long)st.st_ino);
    }
    for (i = 0; text[i] != '\0'; i++) {
        h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    }
    return h;
}
