#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){
  long work=argc>1?atol(argv[1]):0; int n=100000;
  int a[2],b[2]; pipe(a); pipe(b); char c=0; int same=0;
  if(fork()==0){for(int i=0;i<n;i++){read(a[0],&c,1); double s=now(); while(now()-s<work); c=sched_getcpu(); write(b[1],&c,1);} _exit(0);}
  double t0=now();
  for(int i=0;i<n;i++){write(a[1],&c,1); read(b[0],&c,1); same+= (c==sched_getcpu()); double s=now(); while(now()-s<work);}
  double t=now()-t0; wait(0);
  printf("unpinned, %ld ns work each side: round trip %.2f us (minus work %.2f), same cpu %.0f%%\n",work,t/n/1000,t/n/1000-2*work/1000.0,100.0*same/n);
}
