/* The README's first program: forward, backward, read a gradient. */
#include <stdio.h>
#include <yaten.h>

int
main(void)
{
    const double xs[] = {1, 2, 3, 4, 5, 6};
    const int64_t size[] = {2, 3};
    yt_scope_begin(); /* owns every tensor returned until yt_scope_end() */
    yt_tensor *x = yt_tensor_from_data(xs, size, 2, YT_DTYPE_F64);
    yt_set_requires_grad(x, true);
    yt_tensor *loss = yt_sum(yt_tanh(yt_mul(x, x))); /* recorded for autograd */
    if (loss == NULL || yt_backward(loss, NULL, NULL) != YT_OK) {
        fprintf(stderr, "%s\n", yt_errmsg()); /* NULL propagates: check once, at the end */
        return 1;
    }
    yt_tensor *grad = yt_grad(x); /* d loss / dx = 2x (1 - tanh(x^2)^2) */
    yt_tensor_print(grad, NULL);
    yt_scope_end();
    return 0;
}
