#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
int main(int argc,char**argv){
  int ca=atoi(argv[1]), cb=atoi(argv[2]); long spin=argc>3?atol(argv[3]):0; int n=200000;
  int a[2],b[2]; pipe(a); pipe(b); char c=0;
  if(fork()==0){pin(cb); for(int i=0;i<n;i++){read(a[0],&c,1); write(b[1],&c,1);} _exit(0);}
  pin(ca); double t0=now();
  for(int i=0;i<n;i++){write(a[1],&c,1); read(b[0],&c,1); if(spin){double s=now(); while(now()-s<spin);} }
  double t=now()-t0; wait(0);
  printf("cpu %d<->%d spin %ld ns: round trip %.2f us\n",ca,cb,spin,t/n/1000-spin/1000.0);
}
