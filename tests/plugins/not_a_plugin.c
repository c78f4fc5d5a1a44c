/* A shared library without the Weft entry point. */
int not_a_weft_function(void) { return 1; }
