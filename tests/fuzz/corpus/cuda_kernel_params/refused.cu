union U { int a; float b; };
struct B { int b; };
struct S : B { int a : 3; virtual void f(); struct { int x; } in; T t; int arr[n]; };
template <typename T> __global__ void k(U u, S s, T t, const int& r) {}
