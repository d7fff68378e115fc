/* For a grader: which of the library's names a TODO's file uses, read from the file
 * itself (comments, strings and character literals left out). For the library's twins
 * that no --wrap can catch: static functions reached through a table (lesson 08's
 * ZERO_LIBRARY), static inline ones (lesson 10's dtype.h converters), macros.
 *
 *   static const char *const names[] = {"ZERO_LIBRARY", "zero_memory_formula", NULL};
 *   bool readable;
 *   const char *used = source_uses(path, names, true, &readable);
 *
 * whole_word: a name must end where the identifier ends; false: it may begin one (a
 * prefix such as "dtype_bf16_from" for the whole family). Returns the first name used,
 * or NULL; *readable says whether the file could be read at all. */
#ifndef GRADERS_SOURCE_USES_H
#define GRADERS_SOURCE_USES_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool source_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static const char *source_uses(const char *path, const char *const names[], bool whole_word, bool *readable) {
    FILE *f = fopen(path, "rb");
    *readable = f != NULL;
    if (!f) return NULL;
    static char code[1 << 18];
    size_t n = 0;
    int c, prev = 0;
    enum { CODE, LINE, BLOCK, STR, CHR } state = CODE;
    while ((c = fgetc(f)) != EOF && n + 1 < sizeof code) {
        switch (state) { /* what is left out becomes a space: the words on both sides stay apart */
        case CODE:
            if (prev == '/' && c == '/') state = LINE, n--;
            else if (prev == '/' && c == '*') state = BLOCK, n--, c = 0;
            else if (c == '"') state = STR, code[n++] = ' ';
            else if (c == '\'') state = CHR, code[n++] = ' ';
            else code[n++] = (char)c;
            break;
        case LINE: if (c == '\n') state = CODE, code[n++] = '\n'; break;
        case BLOCK: if (prev == '*' && c == '/') state = CODE, c = 0, code[n++] = ' '; break;
        case STR: if (c == '"' && prev != '\\') state = CODE; else if (c == '\\' && prev == '\\') c = 0; break;
        case CHR: if (c == '\'' && prev != '\\') state = CODE; else if (c == '\\' && prev == '\\') c = 0; break;
        }
        prev = c;
    }
    fclose(f);
    code[n] = '\0';
    for (int k = 0; names[k]; k++)
        for (const char *at = code; (at = strstr(at, names[k])); at++)
            if ((at == code || !source_ident_char(at[-1])) &&
                (!whole_word || !source_ident_char(at[strlen(names[k])])))
                return names[k];
    return NULL;
}

#endif
