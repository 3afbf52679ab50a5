/* The embedded default config: examples/fashion_cnn.yaml itself, assembled into the binary with
 * .incbin so that the file in examples/ is the one source of truth (the Makefile makes this
 * object depend on it). */
#include <stddef.h>

#include "config.h"

__asm__(".section .rodata\n"
        ".global cli_default_config\n"
        ".type cli_default_config, @object\n"
        ".balign 16\n"
        "cli_default_config:\n"
        ".incbin \"examples/fashion_cnn.yaml\"\n"
        ".global cli_default_config_end\n"
        "cli_default_config_end:\n"
        ".byte 0\n"
        ".size cli_default_config, . - cli_default_config\n"
        ".previous\n");

extern const char cli_default_config_end[];

size_t
cli_default_config_len(void)
{
    return (size_t)(cli_default_config_end - cli_default_config);
}
