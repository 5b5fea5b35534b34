/*
 * cmd/yamlquote.c - cli_yaml_quote: strings for the settings files the CLI prints.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"

#define QUOTE_BUFS 32
#define QUOTE_SIZE 4096

const char *cli_yaml_quote(const char *s)
{
    static char bufs[QUOTE_BUFS][QUOTE_SIZE];
    static unsigned next;
    char *b = bufs[next++ % QUOTE_BUFS];
    size_t n = 0;

    b[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        size_t k;

        if (*p == '"' || *p == '\\')
            k = (size_t)snprintf(esc, sizeof(esc), "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            k = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", *p);
        else {
            esc[0] = (char)*p;
            k = 1;
        }
        if (n + k + 2 > QUOTE_SIZE) {
            if ((*p & 0xc0) == 0x80) /* inside a UTF-8 sequence: drop its first bytes too */
                while (n > 1 && ((unsigned char)b[--n] & 0xc0) == 0x80)
                    ;
            break;
        }
        memcpy(b + n, esc, k);
        n += k;
    }
    b[n++] = '"';
    b[n] = '\0';
    return b;
}
