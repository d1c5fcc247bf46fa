
BprobsJqRÉ>«">Ò»)>ôY)>