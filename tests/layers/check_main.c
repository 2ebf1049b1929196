/* The program of the layer checks (CMake's layer_check_<layer>): it calls nothing, so its link
 * pulls in every object of one layer and must resolve their calls from the layers below alone. */
int main(void) { return 0; }
